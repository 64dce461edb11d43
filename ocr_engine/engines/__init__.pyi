from .extract import PAGE_WINDOW as PAGE_WINDOW
from .extract import extract_document as extract_document
from .pymupdf_engine import PyMuPDFEngine as PyMuPDFEngine
from .reader import PageReader as PageReader
from .reader import engine_key as engine_key
from .reader import sent_to_ocr as sent_to_ocr
