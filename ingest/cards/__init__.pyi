from .card_ahead import CardAhead as CardAhead
from .cards import CARD_PAGES as CARD_PAGES
from .cards import CardBuilder as CardBuilder
from .cards import card_chunk as card_chunk
from .cards import document_card as document_card
