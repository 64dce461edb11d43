"""Test doubles that the tests and the benchmarks both run for real on loopback: the
OpenAI-compatible DeepSeek-OCR simulator, the LLM stub, the embeddings server, the crash driver,
the hashing embedder and the loopback helpers. Product code (ocr_engine, ingest, retrieval,
server) never imports it."""
