"""A document's chunks and vectors on disk until they go to the index, so memory stays flat.

Windows append to `DATA_DIR/staging/{doc_id}.chunks.jsonl` and `.vectors.f32`; the indexer reads
them back a slice at a time. What a killed process leaves here is removed at the next start.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path

import numpy as np

from retrieval.schema import Chunk

__all__ = ["ChunkStaging", "clear_staging"]


def clear_staging(data_dir: Path) -> None:
    shutil.rmtree(data_dir / "staging", ignore_errors=True)


class ChunkStaging:
    """Append-only chunks with their float32 vectors, for one document."""

    def __init__(self, data_dir: Path, doc_id: str, dim: int) -> None:
        folder = data_dir / "staging"
        folder.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._chunks = folder / f"{doc_id}.chunks.jsonl"
        self._vectors = folder / f"{doc_id}.vectors.f32"
        self._chunks.write_bytes(b"")
        self._vectors.write_bytes(b"")
        self.count = 0

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.shape != (len(chunks), self.dim):
            raise ValueError(f"vectors of shape {matrix.shape} for {len(chunks)} chunks")
        with self._chunks.open("ab") as handle:
            for chunk in chunks:
                handle.write(chunk.model_dump_json().encode("utf-8") + b"\n")
        with self._vectors.open("ab") as handle:
            handle.write(matrix.tobytes())
        self.count += len(chunks)

    def slices(self, size: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        """The chunks and vectors in order, `size` at a time."""
        row = self.dim * 4
        with self._chunks.open("rb") as chunks, self._vectors.open("rb") as vectors:
            while part := list(islice(chunks, size)):
                matrix = np.frombuffer(vectors.read(row * len(part)), dtype=np.float32)
                yield (
                    [Chunk.model_validate_json(line) for line in part],
                    matrix.reshape(len(part), self.dim),
                )

    def remove(self) -> None:
        self._chunks.unlink(missing_ok=True)
        self._vectors.unlink(missing_ok=True)
