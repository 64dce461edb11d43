"""The structured-document contract: pages -> blocks -> lines, boxes in PDF points, top-left origin.

Every engine converts its native coordinates to PDF points of the page as displayed (after /Rotate,
relative to the CropBox's top-left corner, exactly like PyMuPDF's ``page.rect``) before it returns.
Pages are numbered from 1.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ocr_engine.geometry import Box

SCHEMA_NAME = "folio.document"
SCHEMA_VERSION = "1.3"

BBox = Annotated[
    Box,
    Field(description="[x0, y0, x1, y1] in PDF points, top-left origin, x0 <= x1, y0 <= y1"),
]


class BlockType(StrEnum):
    title = "title"  # type: ignore[assignment]
    section_header = "section_header"
    text = "text"
    list_item = "list_item"
    table = "table"
    figure = "figure"
    caption = "caption"
    formula = "formula"
    page_header = "page_header"
    page_footer = "page_footer"
    footnote = "footnote"
    code = "code"


class PageStatus(StrEnum):
    ok = "ok"
    fallback = "fallback"
    failed = "failed"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Line(_Model):
    """One visual line of text: the unit of precise citation."""

    text: str
    bbox: BBox


class TableCell(_Model):
    row: int = Field(ge=0)
    col: int = Field(ge=0)
    row_span: int = Field(default=1, ge=1)
    col_span: int = Field(default=1, ge=1)
    text: str
    bbox: BBox | None = None
    header: bool = False


class Link(_Model):
    """A hyperlink of the source, at the words of the page that carry it."""

    url: str
    text: str
    bbox: BBox


class Block(_Model):
    id: str = Field(description="stable within the document: p{page}-b{index}")
    type: BlockType
    bbox: BBox
    text: str = Field(description="markdown; for tables the markdown table")
    level: int | None = Field(default=None, ge=1, description="heading level, 1 = top")
    lines: list[Line] = Field(default_factory=list)
    html: str | None = None
    cells: list[TableCell] = Field(default_factory=list)
    links: list[Link] = Field(
        default_factory=list, description="hyperlinks its source gives its words (schema 1.3)"
    )
    engine: EngineInfo | None = Field(
        default=None,
        description="the engine that read this block's text when not the page's (a figure's "
        "text read by OCR on a text-layer page)",
    )


class EngineInfo(_Model):
    name: str = Field(description="pymupdf, vllm, rapidocr, ...")
    model: str | None = None
    version: str | None = None


class PageError(_Model):
    code: str
    message: str


class Page(_Model):
    number: int = Field(ge=1)
    width: float = Field(gt=0)
    height: float = Field(gt=0)
    rotation: int = 0
    engine: EngineInfo
    route: str | None = Field(
        default=None, description="why this engine read the page, e.g. 'no text layer'"
    )
    status: PageStatus = PageStatus.ok
    errors: list[PageError] = Field(default_factory=list)
    blocks: list[Block] = Field(default_factory=list)

    def renumbered(self) -> Page:
        """The page with its blocks' ids given again in their order (`p{page}-b{index}`)."""
        blocks = [
            b.model_copy(update={"id": f"p{self.number}-b{i}"}) for i, b in enumerate(self.blocks)
        ]
        return self.model_copy(update={"blocks": blocks})


class Document(_Model):
    schema_name: str = SCHEMA_NAME
    schema_version: str = SCHEMA_VERSION
    doc_id: str = Field(description="sha256 of the file bytes")
    source: str = Field(description="file name")
    page_count: int = Field(ge=0)
    pages: list[Page]
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("schema_version")
    @classmethod
    def _compatible(cls, value: str) -> str:
        if value.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(f"document schema {value} is incompatible with {SCHEMA_VERSION}")
        return value


def json_schema() -> dict[str, object]:
    """The JSON Schema of `Document`, as checked into `ocr_engine/document.schema.json`."""
    return Document.model_json_schema()
