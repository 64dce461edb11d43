"""MinerU2.5's second step over an endpoint: crop each region of a layout answer, read it.

Kept apart from `ocr_engine.engines.vllm_engine`, which owns the requests (retries, the strict
guard, the bound on requests in flight) and hands them in as `ask`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ocr_engine.engines.mineru import (
    content_prompt,
    mineru_blocks,
    mineru_request,
    parse_layout,
    region_box,
    render_crop,
)
from ocr_engine.engines.render import RenderedPage
from ocr_engine.errors import EngineError
from ocr_engine.geometry import Box
from ocr_engine.inputs.pdf import open_pdf
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import Block

__all__ = [
    "CropError",
    "CropRenderer",
    "ImageFrame",
    "RegionsRead",
    "read_regions",
    "render_crops",
    "timed_render_crops",
]

# (displayed-page box, angle) of each region -> its crop, rendered
CropRenderer = Callable[[list[tuple[Box, int]]], Awaitable[list[RenderedPage]]]


class CropError(EngineError):
    """The crops of a page could not be rendered (the engine reports `render_failed`)."""


@dataclass(frozen=True, slots=True)
class ImageFrame:
    """What an image showed: the `width` x `height` points at (x0, y0), in pixels."""

    width: float
    height: float
    x0: float
    y0: float
    width_px: int
    height_px: int


def render_crops(
    pdf: bytes,
    password: str | None,
    number: int,
    dpi: int,
    max_pixels: int,
    regions: list[tuple[Box, int]],
) -> list[RenderedPage]:
    """The regions of page `number` rendered by `mineru.render_crop` from a document of its own
    (for a thread: documents are not shared)."""
    with open_pdf(pdf, password=password) as doc:
        page = doc.load_page(number - 1)
        return [
            render_crop(page, box, dpi=dpi, max_pixels=max_pixels, angle=angle)
            for box, angle in regions
        ]


def timed_render_crops(
    pdf: bytes,
    password: str | None,
    number: int,
    dpi: int,
    max_pixels: int,
    regions: list[tuple[Box, int]],
) -> tuple[list[RenderedPage], float]:
    """`render_crops` and the CPU seconds the calling thread spent on it."""
    started = time.thread_time()
    crops = render_crops(pdf, password, number, dpi, max_pixels, regions)
    return crops, time.thread_time() - started


@dataclass(slots=True)
class RegionsRead:
    """A page read in two steps: its blocks, and the CPU seconds spent building the regions'
    request bodies (base64, JSON) and parsing, on the calling thread."""

    blocks: list[Block]
    encode_cpu_s: float
    parse_cpu_s: float


async def read_regions(
    ask: Callable[[bytes], Coroutine[Any, Any, str]],
    options: VLLMOptions,
    number: int,
    layout: str,
    frame: ImageFrame,
    render: CropRenderer,
) -> RegionsRead:
    """The page's blocks: each region of the `layout` answer that has text cropped by `render`
    and read by `ask` (all at once; the first failure cancels the rest and is raised).

    Raises EngineOutputError for an unreadable layout, CropError when the crops fail."""
    started = time.thread_time()
    regions = parse_layout(layout)
    asked = [(i, p) for i, r in enumerate(regions) if (p := content_prompt(r)) is not None]
    boxes = [
        (region_box(regions[i], frame.width, frame.height, frame.x0, frame.y0), regions[i].angle)
        for i, _ in asked
    ]
    parse_s = time.thread_time() - started
    try:
        images = await render(boxes)
    except Exception as exc:
        raise CropError(f"{type(exc).__name__}: {exc}") from exc
    started = time.thread_time()
    bodies = []
    for (_, prompt), image in zip(asked, images, strict=True):
        url = "data:image/png;base64," + base64.b64encode(image.png).decode("ascii")
        request = mineru_request(options, url, image.width_px, image.height_px, prompt=prompt)
        bodies.append(json.dumps(request).encode())
    encode_s = time.thread_time() - started
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(ask(body)) for body in bodies]
    except BaseExceptionGroup as errors:
        raise errors.exceptions[0] from None
    contents: list[str | None] = [None] * len(regions)
    for (index, _), task in zip(asked, tasks, strict=True):
        contents[index] = task.result()
    started = time.thread_time()
    blocks = mineru_blocks(
        regions,
        contents,
        width=frame.width,
        height=frame.height,
        page_number=number,
        x0=frame.x0,
        y0=frame.y0,
    )
    return RegionsRead(blocks, encode_s, parse_s + time.thread_time() - started)
