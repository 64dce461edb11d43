"""Box arithmetic and capped render sizes (ocr_engine.geometry), checked against real renders."""

from __future__ import annotations

import math

import pymupdf
import pytest

from ocr_engine.engines.rapid_engine import render_array
from ocr_engine.engines.render import render_page
from ocr_engine.geometry import (
    area,
    capped_zoom,
    centre_inside,
    clamp,
    fit_dpi,
    from_grid,
    intersection,
    iou,
    normalised,
    render_pixels,
    rounded,
    scale,
    to_points,
    translate,
    union,
)


def test_union_holds_every_box_and_refuses_none() -> None:
    assert union([(10, 20, 30, 40)]) == (10, 20, 30, 40)
    assert union([(10, 20, 30, 40), (5, 25, 12, 50), (28, 0, 29, 1)]) == (5, 0, 30, 50)
    assert union(b for b in [(1.5, 1, 2, 2), (0, 0, 1, 1)]) == (0, 0, 2, 2)
    with pytest.raises(ValueError, match="no boxes"):
        union([])


def test_intersection_is_the_shared_area_or_none() -> None:
    assert intersection((0, 0, 10, 10), (5, 5, 20, 20)) == (5, 5, 10, 10)
    assert intersection((0, 0, 10, 10), (2, 3, 4, 5)) == (2, 3, 4, 5)
    assert intersection((0, 0, 10, 10), (10, 0, 20, 10)) is None  # touching edges share no area
    assert intersection((0, 0, 10, 10), (11, 11, 12, 12)) is None
    assert area((0, 0, 4, 5)) == 20 and area((4, 0, 0, 5)) == 0
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    assert centre_inside((9, 9, 13, 13), (0, 0, 10, 10)) and not centre_inside(
        (9, 9, 15, 15), (0, 0, 10, 10)
    )
    assert centre_inside((10, 10, 12, 12), (0, 0, 10, 10), pad=1.0)
    assert not centre_inside((10, 10, 12, 12), (0, 0, 10, 10), pad=0.0)


def test_clamp_moves_each_edge_into_the_bounds() -> None:
    page = (0.0, 0.0, 612.0, 792.0)
    assert clamp((10, 20, 30, 40), page) == (10, 20, 30, 40)
    assert clamp((-5, -1, 700, 800), page) == (0, 0, 612, 792)
    assert clamp((650, 900, 700, 950), page) == (612, 792, 612, 792)  # outside: onto the corner
    assert clamp((5, 5, 50, 50), (10, 10, 20, 20)) == (10, 10, 20, 20)
    assert normalised((30, 40, 10, 20)) == (10, 20, 30, 40)


def test_scale_maps_pixels_grids_and_points() -> None:
    box = (72.0, 36.0, 144.0, 90.0)
    zoom = 200 / 72
    pixels = scale(box, zoom)
    assert pixels == pytest.approx((200, 100, 400, 250))
    assert to_points(pixels, zoom) == pytest.approx(box)
    assert scale(pixels, 1 / zoom) == pytest.approx(box)
    assert translate(box, 10, -6) == (82, 30, 154, 84)
    assert rounded((1.234, 5.678, 9.999, 0.005)) == (1.23, 5.68, 10.0, 0.01)
    # a model's grid: 0..999 (DeepSeek-OCR) or 0..1000 over the image of a page at (x0, y0)
    assert from_grid((0, 0, 999, 999), 999, 612, 792) == (0, 0, 612, 792)
    assert from_grid((0, 0, 500, 1000), 1000, 600, 800, 10, 20) == (10, 20, 310, 820)
    assert from_grid((999, 999, 0, 0), 999, 612, 792) == (0, 0, 612, 792)  # corners put in order
    assert from_grid((-5, 0, 1200, 999), 999, 100, 100) == (0, 0, 100, 100)  # clamped to the grid


def _page(doc: pymupdf.Document, width: float, height: float, **kw: object) -> pymupdf.Page:
    page = doc.new_page(width=width, height=height)
    if "crop" in kw:
        page.set_cropbox(pymupdf.Rect(kw["crop"]))  # type: ignore[arg-type]
    if "rotate" in kw:
        page.set_rotation(int(kw["rotate"]))  # type: ignore[call-overload]
    return page


# (width, height, page options, dpi, pixel cap): odd sizes, a thin strip, a page larger than
# the cap at every dpi asked, a cropped and a rotated page, one exactly on the cap
CASES = [
    (612, 792, {}, 144, 6_000_000),
    (20000, 20000, {}, 144, 2_000_000),
    (3000, 2000, {}, 200, 400_000),
    (1, 20000, {}, 300, 100_000),
    (613.37, 791.11, {"crop": (3.3, 7.7, 600.1, 780.9)}, 200, 1_000_000),
    (595.3, 841.9, {"rotate": 90}, 300, 3_000_000),
    (720, 720, {}, 72, 720 * 720),
]


@pytest.mark.parametrize(("width", "height", "kw", "dpi", "cap"), CASES)
def test_capped_render_stays_under_the_cap_in_real_renders(
    width: float, height: float, kw: dict[str, object], dpi: int, cap: int
) -> None:
    with pymupdf.open() as doc:
        page = _page(doc, width, height, **kw)
        rect = page.rect
        zoom = capped_zoom(rect.width, rect.height, dpi, cap)
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        assert pix.width * pix.height <= render_pixels(rect.width, rect.height, zoom) <= cap
        assert (pix.width, pix.height) == (
            math.ceil(rect.width * zoom),
            math.ceil(rect.height * zoom),
        )
        if render_pixels(rect.width, rect.height, dpi / 72) <= cap:
            assert zoom == dpi / 72  # nothing to cap
        else:
            assert render_pixels(rect.width, rect.height, zoom / 0.99) > cap  # not needlessly low
        # the vLLM renders (render_page) and the CPU OCR renders (render_array) agree
        png = render_page(page, dpi=dpi, max_pixels=cap)
        array = render_array(page, dpi, cap)
        assert (png.width_px, png.height_px) == (pix.width, pix.height)
        assert array.image.shape[:2] == (pix.height, pix.width) and array.zoom == zoom


def test_fit_dpi_is_the_largest_whole_dpi_within_the_cap() -> None:
    assert fit_dpi(612, 792, 144, 20_000_000) == 144
    assert fit_dpi(0, 792, 144, 20_000_000) == 0  # an empty area
    assert fit_dpi(14_400, 14_400, 1, 100) == 0  # not even 1 dpi fits
    fitted = fit_dpi(14_400, 14_400, 300, 20_000_000)
    assert render_pixels(14_400, 14_400, fitted / 72) <= 20_000_000
    assert render_pixels(14_400, 14_400, (fitted + 1) / 72) > 20_000_000
    with pymupdf.open() as doc:
        page = doc.new_page(width=14_400, height=14_400)
        pix = page.get_pixmap(dpi=fitted, alpha=False)
        assert pix.width * pix.height <= 20_000_000
