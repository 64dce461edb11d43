from .furniture import FurnitureMarker as FurnitureMarker
from .furniture import mark_furniture as mark_furniture
from .furniture import printed_number as printed_number
