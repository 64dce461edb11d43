from .scan import summarize as summarize
from .sync import Sync as Sync
from .watcher import FolderWatcher as FolderWatcher
from .worker import IngestWorker as IngestWorker
