"""PDF page -> structured page (blocks, lines, bboxes). Knows nothing of chunks or vectors."""
