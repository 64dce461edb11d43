"""Folder or upload -> extract -> chunk -> embed -> index."""
