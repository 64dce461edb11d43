from .docling_export import to_docling as to_docling
from .markdown import document_markdown as document_markdown
from .markdown import page_markdown as page_markdown
from .plaintext import document_text as document_text
from .plaintext import page_text as page_text
from .searchable import searchable_pdf as searchable_pdf
