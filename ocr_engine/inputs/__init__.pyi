from .images import document_pdf_bytes as document_pdf_bytes
from .images import is_document_name as is_document_name
from .images import sniff as sniff
from .images import stored_pdf_bytes as stored_pdf_bytes
from .office import check_office as check_office
from .office import is_office_name as is_office_name
from .pdf import open_pdf as open_pdf
from .pdf import open_stored as open_stored
