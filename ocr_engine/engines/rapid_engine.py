"""The CPU OCR engine: a page image -> lines and paragraph blocks through RapidOCR's ONNX models.

The page is rendered as displayed (after /Rotate). Text is detected on a downscaled copy (the
detector's cost grows with pixels, its accuracy does not need 200 dpi), recognised on crops of the
full render, and read upright whatever the scan's orientation: sideways pages are recognised by the
shape of their text boxes, upside-down ones by the direction classifier's vote over the longest
lines. Boxes are mapped back through the rotation and the render scale to displayed-page points.
Models load on first use, once, under a lock.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pymupdf

from ocr_engine.engines.engine import PageWindow, read_each, read_page
from ocr_engine.engines.figure_tables import RegionRead, figure_blocks
from ocr_engine.errors import EngineOutputError, EngineUnavailableError
from ocr_engine.geometry import Box, capped_zoom, clamp, rounded, scale, to_points, translate, union
from ocr_engine.layout.layout import LayoutBlock
from ocr_engine.layout.ocr_joins import join_blocks
from ocr_engine.layout.ocr_layout import OcrLine, layout_page
from ocr_engine.layout.ocr_quads import Quad, axis_box, ink_span, split_quads
from ocr_engine.layout.orientation import classify_orientation
from ocr_engine.layout.scan_layout import ScanLayout, lay_out
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.layout.scan_tables import ScanTable, table_block
from ocr_engine.options import CpuOcrOptions
from ocr_engine.schema import Block, EngineInfo, Line, Page

__all__ = ["RapidOCREngine", "RenderedArray", "reading_order", "render_array"]

log = logging.getLogger(__name__)

ENGINE_NAME = "rapidocr"
DET_MODEL = "PP-OCRv6_det_small"
REC_MODEL = "PP-OCRv6_rec_small"
CLS_MODEL = "ch_ppocr_mobile_v2.0_cls_mobile"
DEFAULT_DET_SIDE = 1280  # longest side of the image the detector sees, in pixels
TEXT_SCORE = 0.5  # recognised runs below this confidence are dropped (RapidOCR's default)
ORIENTATION_SAMPLE = 12  # longest lines the direction classifier votes on
REGION_MAX_PIXELS = 4_000_000  # cap on W*H of the render of one figure region

Orienting = Literal["text", "model"]  # text boxes' shape + direction votes, or the page classifier


def _rapidocr_version() -> str | None:
    try:
        return metadata.version("rapidocr")
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True, slots=True)
class _Models:
    det: Any
    cls: Any
    rec: Any


@dataclass(frozen=True, slots=True)
class RenderedArray:
    """A displayed-page render: page point (x, y) is pixel ((x - x0) * zoom, (y - y0) * zoom)."""

    image: np.ndarray
    zoom: float
    x0: float
    y0: float


def render_array(page: pymupdf.Page, dpi: int, max_pixels: int) -> RenderedArray:
    """The page as displayed, RGB, at `dpi` or less so that W*H stays under `max_pixels`."""
    rect = page.rect
    zoom = capped_zoom(rect.width, rect.height, dpi, max_pixels)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace=pymupdf.csRGB)
    image = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)
    return RenderedArray(
        image=np.ascontiguousarray(image[:, :, :3]),
        zoom=zoom,
        x0=rect.x0,
        y0=rect.y0,
    )


def rotate_point(x: float, y: float, k: int, width: float, height: float) -> tuple[float, float]:
    """A point of a `width` x `height` image after `np.rot90(image, k)` (k quarter turns
    counter-clockwise)."""
    for _ in range(k % 4):
        x, y, width, height = y, width - x, height, width
    return x, y


def unrotate_box(box: Box, k: int, width: float, height: float) -> Box:
    """A box of the image turned by `np.rot90(image, k)` mapped back onto the original image
    (`width` x `height`, the unturned size)."""
    w, h = (height, width) if k % 2 else (width, height)  # size of the turned image
    xs, ys = [], []
    for x, y in ((box[0], box[1]), (box[2], box[1]), (box[2], box[3]), (box[0], box[3])):
        px, py = rotate_point(x, y, -k % 4, w, h)
        xs.append(px)
        ys.append(py)
    return (min(xs), min(ys), max(xs), max(ys))


def _tall(quad: Quad) -> bool:
    """Whether a text quad is set sideways: the crop turns it a quarter (RapidOCR's rule)."""
    across = max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[2] - quad[3]))
    down = max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2]))
    return bool(across > 0 and down >= 1.5 * across)


def _elongation(quads: list[Quad]) -> tuple[float, float]:
    """Total length of the clearly horizontal and of the clearly vertical text boxes."""
    across = down = 0.0
    for q in quads:
        w = float(np.linalg.norm(q[1] - q[0]))
        h = float(np.linalg.norm(q[3] - q[0]))
        if w >= 2 * h:
            across += w
        elif h >= 2 * w:
            down += h
    return across, down


def reading_order(lines: list[Line]) -> list[Line]:
    """Lines in rows from the top (a line joins a row when its middle lies within the first
    line's height), each row from the left."""
    rows: list[list[Line]] = []
    for line in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
        middle = (line.bbox[1] + line.bbox[3]) / 2
        if rows and rows[-1][0].bbox[1] <= middle <= rows[-1][0].bbox[3]:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda ln: ln.bbox[0])]


class RapidOCREngine:
    """RapidOCR (PP-OCR detection, direction and recognition models, ONNX on CPU)."""

    name = ENGINE_NAME

    def __init__(
        self,
        options: CpuOcrOptions | None = None,
        *,
        det_side: int = DEFAULT_DET_SIDE,
        threads: int | None = None,
        layout: bool = True,
        orientation: Orienting = "text",
    ) -> None:
        self.options = options or CpuOcrOptions()
        self.det_side = det_side
        self.threads = threads
        self.layout = layout  # the layout and table models (`scan_layout`); else heuristics alone
        self.orientation = orientation
        self.scan_models = ScanModels(threads)
        self.info = EngineInfo(
            name=ENGINE_NAME, model=f"{DET_MODEL}+{REC_MODEL}", version=_rapidocr_version()
        )
        self._models: _Models | None = None
        self._lock = threading.Lock()

    def read_region(self, page: pymupdf.Page, box: Box) -> list[Line]:
        """The lines inside `box` (displayed-page points) of `page`, rendered alone at the
        engine's dpi capped to `REGION_MAX_PIXELS`, in reading order. Raises `EngineError`."""
        return self._region(page, box).lines

    def read_figure(self, page: pymupdf.Page, block: Block) -> list[Block]:
        """The figure `block` of a text-layer page read as `read_region` reads it; a picture of a
        table is a table with cells (`figure_tables`; not with `layout=False`)."""
        read = self._region(page, block.bbox)
        return figure_blocks(block, read, self.scan_models if self.layout else None, self.info)

    def _region(self, page: pymupdf.Page, box: Box) -> RegionRead:
        x0, y0, x1, y1 = box
        zoom = capped_zoom(x1 - x0, y1 - y0, self.options.dpi, REGION_MAX_PIXELS)
        origin = page.rect
        clip = pymupdf.Rect(x0 + origin.x0, y0 + origin.y0, x1 + origin.x0, y1 + origin.y0)
        try:
            pix = page.get_pixmap(
                matrix=pymupdf.Matrix(zoom, zoom), clip=clip, alpha=False, colorspace=pymupdf.csRGB
            )
        except Exception as exc:
            raise EngineOutputError(f"the region cannot be rendered: {exc}") from exc
        image = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)
        image = np.ascontiguousarray(image[:, :, :3])
        found, turns = self.read_image(image)
        img_h, img_w = image.shape[:2]
        lines = []
        for ln in found:
            if not any(c.isalnum() for c in ln.text):
                continue  # bars, bullets and legend marks read as symbols
            shown = to_points(unrotate_box(ln.box, turns, img_w, img_h), zoom)
            bbox = clamp(translate(shown, x0, y0), box)
            lines.append(Line(text=ln.text, bbox=rounded(bbox)))
        return RegionRead(image, zoom, turns, reading_order(lines))

    def _load(self) -> _Models:
        """The three ONNX sessions, built once from the model files inside the rapidocr wheel."""
        if self._models is not None:
            return self._models
        with self._lock:
            if self._models is None:
                self._models = self._build()
        return self._models

    def _build(self) -> _Models:
        try:
            import rapidocr
            from rapidocr import RapidOCR
        except ImportError as exc:
            raise EngineUnavailableError(f"rapidocr is not installed: {exc}") from exc
        model_dir = Path(rapidocr.__file__).parent / "models"
        paths = {name: model_dir / f"{name}.onnx" for name in (DET_MODEL, REC_MODEL, CLS_MODEL)}
        missing = [str(p) for p in paths.values() if not p.is_file()]
        if missing:
            raise EngineUnavailableError(f"RapidOCR model files missing: {', '.join(missing)}")
        threads = self.threads if self.threads is not None else -1
        params: dict[str, Any] = {
            "Global.log_level": "warning",
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "Det.model_path": str(paths[DET_MODEL]),
            "Det.limit_type": "max",
            "Det.limit_side_len": self.det_side,
            "Rec.model_path": str(paths[REC_MODEL]),
            "Cls.model_path": str(paths[CLS_MODEL]),
        }
        try:
            reader = RapidOCR(params=params)
            models = _Models(
                det=reader._load_det_model(),
                cls=reader._load_cls_model(),
                rec=reader._load_rec_model(),
            )
        except Exception as exc:
            raise EngineUnavailableError(f"RapidOCR models failed to load: {exc}") from exc
        log.info("RapidOCR loaded: %s, %s, %s (det side %d)", *paths, self.det_side)
        return models

    def read(self, window: PageWindow) -> list[Page]:
        """The window's pages read by OCR, one after another; failed ones included."""
        return read_each(self.info, window, self.extract_page)

    def close(self) -> None:
        """Nothing to release: the models stay loaded for the next window."""

    def extract_page(self, page: pymupdf.Page) -> Page:
        """One page read by OCR: upright paragraph blocks, boxes in displayed-page points."""
        render = render_array(page, self.options.dpi, self.options.max_pixels)
        width, height = page.rect.width, page.rect.height
        lines, turns = self.read_image(render.image)
        img_h, img_w = render.image.shape[:2]
        zoom = render.zoom
        # lay out in upright page points (the render's scale, turned like the text)
        upright = [
            OcrLine(text=ln.text, box=scale(ln.box, 1 / zoom), score=ln.score) for ln in lines
        ]
        up_w, up_h = (height, width) if turns % 2 else (width, height)
        first = page.number == 0
        if self.layout and upright:
            image = np.ascontiguousarray(np.rot90(render.image, turns))
            laid = lay_out(self.scan_models, image, zoom, upright, up_w, up_h, first_page=first)
        else:
            laid = ScanLayout(join_blocks(layout_page(upright, up_w, up_h, first_page=first)))

        def to_page(box: Box) -> Box:
            """Upright points -> upright pixels -> displayed pixels -> displayed points."""
            shown = to_points(unrotate_box(scale(box, zoom), turns, img_w, img_h), zoom)
            return translate(clamp(shown, (0.0, 0.0, width, height)), render.x0, render.y0)

        blocks = [
            self._to_block(item, laid.tables.get(id(item)), to_page, page.number + 1, index)
            for index, item in enumerate(laid.blocks)
        ]
        return read_page(page, self.info, blocks)

    @staticmethod
    def _to_block(
        item: LayoutBlock, table: ScanTable | None, to_page: Any, page_no: int, index: int
    ) -> Block:
        if table is not None:
            return table_block(table, to_page, f"p{page_no}-b{index}")
        lines = [Line(text=ln.text, bbox=rounded(to_page(ln.bbox))) for ln in item.lines]
        boxes = [ln.bbox for ln in lines] if item.box is None else [to_page(item.box)]
        box = rounded(union([*boxes, *(ln.bbox for ln in lines)]))
        return Block(
            id=f"p{page_no}-b{index}",
            type=item.type,
            bbox=box,
            text=item.text,
            level=item.level,
            lines=lines,
        )

    def read_image(self, image: np.ndarray) -> tuple[list[OcrLine], int]:
        """Recognised runs in pixels of the upright image, and the quarter turns
        (`np.rot90(image, k)`) that made it upright. Raises `EngineOutputError`."""
        if image.size == 0 or int(image.max()) - int(image.min()) < 8:
            return [], 0  # blank: nothing for the detector to find
        models = self._load()
        try:
            image, quads, turns = self.orient(image)
            lines = self._recognise(models, image, split_quads(image, quads))
        except EngineOutputError:
            raise
        except Exception as exc:
            raise EngineOutputError(f"RapidOCR failed: {type(exc).__name__}: {exc}") from exc
        return lines, turns

    def orient(self, image: np.ndarray) -> tuple[np.ndarray, list[Quad], int]:
        """The image turned upright, its text quads and the quarter turns that did it: by the
        text boxes' shape (sideways) and the direction classifier's vote (upside down), or by
        the page classifier (`orientation="model"`)."""
        models = self._load()
        if self.orientation == "model":
            turns = classify_orientation(self.scan_models, image).turns
            image = np.ascontiguousarray(np.rot90(image, turns))
            return image, self._detect(models, image), turns
        turns = 0
        quads = self._detect(models, image)
        across, down = _elongation(quads)
        if down > 1.5 * across:
            turns = 1
            image = np.ascontiguousarray(np.rot90(image, 1))
            quads = self._detect(models, image)
        if quads and self._upside_down(models, image, quads):
            turns += 2
            h, w = image.shape[:2]
            image = np.ascontiguousarray(np.rot90(image, 2))
            quads = [
                np.array([[w - x, h - y] for x, y in q[[2, 3, 0, 1]]], np.float32) for q in quads
            ]
        return image, quads, turns % 4

    @staticmethod
    def _detect(models: _Models, image: np.ndarray) -> list[Quad]:
        result = models.det(image)
        if result.boxes is None:
            return []
        return [np.asarray(q, dtype=np.float32) for q in result.boxes]

    @staticmethod
    def _crop(image: np.ndarray, quad: Quad) -> np.ndarray:
        from rapidocr.utils.process_img import get_rotate_crop_image

        return get_rotate_crop_image(image, quad.copy())

    def _upside_down(self, models: _Models, image: np.ndarray, quads: list[Quad]) -> bool:
        """The direction classifier's confidence-weighted vote over the longest horizontal lines."""
        horizontal = [
            q for q in quads if np.linalg.norm(q[1] - q[0]) >= 2 * np.linalg.norm(q[3] - q[0])
        ]
        sample = sorted(horizontal, key=lambda q: -float(np.linalg.norm(q[1] - q[0])))
        sample = sample[:ORIENTATION_SAMPLE]
        if not sample:
            return False
        result = models.cls([self._crop(image, q) for q in sample])
        flipped = sum(score for label, score in result.cls_res if "180" in label)
        upright = sum(score for label, score in result.cls_res if "180" not in label)
        return flipped > 1.5 * upright  # flipped pages vote ~10:1, upright ones at most ~1:2

    def _recognise(self, models: _Models, image: np.ndarray, quads: list[Quad]) -> list[OcrLine]:
        from rapidocr.ch_ppocr_rec import TextRecInput

        if not quads:
            return []
        crops = [self._crop(image, q) for q in quads]
        result = models.rec(TextRecInput(img=crops))
        if result.txts is None or result.scores is None or len(result.txts) != len(quads):
            raise EngineOutputError("RapidOCR recognition returned no result for detected text")
        texts, scores = list(result.txts), list(result.scores)
        # a sideways run is turned a quarter one way by the crop; it may read the other way
        sideways = [i for i, q in enumerate(quads) if _tall(q)]
        if sideways:
            turned = models.rec(TextRecInput(img=[np.rot90(crops[i], 2) for i in sideways]))
            if turned.txts is not None and turned.scores is not None:
                for i, text, score in zip(sideways, turned.txts, turned.scores, strict=True):
                    if float(score) > float(scores[i]):
                        texts[i], scores[i] = text, score
        lines = []
        for quad, text, score in zip(quads, texts, scores, strict=True):
            text = " ".join(str(text).split())
            if not text or float(score) < TEXT_SCORE:
                continue
            box = ink_span(image, axis_box(quad))
            lines.append(OcrLine(text=text, box=box, score=float(score)))
        return lines
