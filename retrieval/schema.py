"""The index contract: chunks (Qdrant point payloads), search hits, citations and query answers.

Boxes are PDF points, top-left origin, pages 1-based, exactly as in `ocr_engine.schema`.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ocr_engine.geometry import Box
from retrieval.doc_card import DocumentCard

CHUNK_SCHEMA_VERSION = "1.1"  # 1.1: paragraphs and tables continued across pages
DOC_ID_PATTERN = r"^[0-9a-f]{64}$"  # a document id: the sha256 of its bytes
DOC_ID_OR_PREFIX = r"^[0-9a-f]{8,64}$"  # an id, or a prefix of one that the API resolves
_POINT_NAMESPACE = uuid.UUID("6f1c2a9e-3d4b-5a8c-9e7f-0b1d2c3e4f50")

BBox = Annotated[Box, Field(description="[x0, y0, x1, y1] in PDF points")]


class Region(BaseModel):
    page: int = Field(ge=1)
    bbox: BBox


class ChunkLine(BaseModel):
    """A line of a chunk: where it is on the page and which characters of `Chunk.text` it holds."""

    page: int = Field(ge=1)
    bbox: BBox
    start: int = Field(ge=0)
    end: int = Field(ge=0)


TABLE_ROWS_KIND = "table_rows"
DENSE_POOL = 8  # an extractive answer's candidate sentences ranked again by the embedder
"""The `Chunk.kind` of one row group of a table too long for one chunk (each repeats its header)."""


class Chunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: str = Field(description="stable key within the document, e.g. c0003")
    doc_id: str
    source: str
    section_path: list[str] = Field(default_factory=list)
    kind: str = Field(description="text, table, figure_caption, ...")
    text: str = Field(description="what is shown and quoted")
    embed_text: str = Field(description="what is embedded: section trail + text")
    regions: list[Region]
    lines: list[ChunkLine] = Field(default_factory=list)
    doc_version: str = CHUNK_SCHEMA_VERSION
    card: DocumentCard | None = Field(
        default=None, description="on the document's card point (kind `card`) only"
    )

    @property
    def point_id(self) -> str:
        return point_id(self.doc_id, self.chunk_id)

    @property
    def page(self) -> int:
        return self.regions[0].page


def point_id(doc_id: str, chunk_id: str) -> str:
    """Deterministic Qdrant point id, so that a re-ingest replaces instead of duplicating."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{doc_id}/{chunk_id}"))


class ScoredChunk(BaseModel):
    chunk: Chunk
    score: float


class SearchFilter(BaseModel):
    """Payload filter for a search: restrict to documents and/or a page range (inclusive)."""

    doc_ids: list[str] | None = None
    page_from: int | None = Field(default=None, ge=1)
    page_to: int | None = Field(default=None, ge=1)


class Hit(BaseModel):
    doc_id: str
    source: str
    page: int
    regions: list[Region]
    text: str
    score: float
    chunk_id: str
    section_path: list[str] = Field(default_factory=list)


Verdict = Literal["supported", "weak", "unsupported", "invalid"]


class Support(BaseModel):
    """How well a cited source backs the answer sentence that cites it (generated answers)."""

    verdict: Verdict = Field(description="invalid: the marker names no source")
    lexical: float = Field(description="share of the sentence's content terms found in the source")
    embedding: float | None = Field(
        default=None, description="cosine of the sentence and the source's closest sentence"
    )
    numbers_missing: list[str] = Field(
        default_factory=list, description="numbers of the sentence that the source lacks"
    )
    claim: str = Field(description="the answer sentence, markers removed")


class ClaimCheck(Support):
    """One [n] marker of one answer sentence, checked; unkept markers left the answer text."""

    n: int = Field(description="the source number the marker named")
    sentence: int = Field(ge=0, description="index of the sentence in the generated answer")
    kept: bool


class LlmFailure(BaseModel):
    """Why a generated answer fell back to the extractive one."""

    code: str
    message: str


class RerankFailure(BaseModel):
    """Why the hits keep the fused order: the re-ranker failed (FOLIO_RERANK)."""

    code: str
    message: str


class PageHighlight(BaseModel):
    """A page a citation's evidence is on, and the link of its image with the evidence drawn."""

    page: int = Field(ge=1)
    highlight_url: str


class Citation(BaseModel):
    n: int = Field(ge=1, description="the [n] marker in the answer text")
    doc_id: str
    source: str
    page: int
    bbox: BBox = Field(description="tightest box of the supporting lines")
    regions: list[Region] = Field(default_factory=list)
    quote: str
    score: float
    page_image_url: str
    highlight_url: str
    viewer_url: str
    crop_url: str = Field(
        description="the image of `bbox` (a cell's whole row) with a margin, the evidence drawn"
    )
    page_highlights: list[PageHighlight] = Field(
        default_factory=list,
        description="each page of `regions` with its evidence drawn (`page` first)",
    )
    page_url_template: str = Field(
        description="the image of any page of the document: replace `{n}` with its number"
    )
    support: Support | None = Field(
        default=None, description="generated answers: the weakest check of the kept sentences"
    )


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(default=5, ge=1, le=100)
    doc_ids: (
        list[
            Annotated[
                str,
                Field(
                    pattern=DOC_ID_OR_PREFIX,
                    description="sha256 (64 hex), or a prefix of 8 or more that one id begins with",
                ),
            ]
        ]
        | None
    ) = Field(default=None, max_length=1000)
    page_from: int | None = Field(default=None, ge=1)
    page_to: int | None = Field(default=None, ge=1)

    @field_validator("question")
    @classmethod
    def _has_words(cls, question: str) -> str:
        """A question of blanks or punctuation alone asks nothing."""
        if not any(ch.isalnum() for ch in question):
            raise ValueError("the question has no letters or digits")
        return question


AnswerMode = Literal["extractive", "generated", "not_found"]


class QueryResponse(BaseModel):
    answer: str | None = Field(
        description="null when the documents do not answer the question (mode not_found)"
    )
    citations: list[Citation]
    hits: list[Hit]
    mode: AnswerMode = Field(
        default="extractive",
        description="not_found: no passage supports an answer; `hits` still lists the nearest",
    )
    checks: list[ClaimCheck] = Field(
        default_factory=list, description="generated answers: every [n] marker, checked"
    )
    llm_error: LlmFailure | None = Field(
        default=None, description="set when the LLM failed and the answer is extractive"
    )
    rerank_error: RerankFailure | None = Field(
        default=None, description="set when the re-ranker failed and the hits keep the fused order"
    )
