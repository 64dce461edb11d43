from . import answers as answers
from . import doc_bytes as doc_bytes
from . import documents as documents
from . import exports as exports
from . import extract as extract
from . import health as health
from . import ingest as ingest
from . import pages as pages
