"""Small PDFs made in the tests: documents with known facts, and the bad inputs users drop."""

from __future__ import annotations

import pymupdf

FACTS = {
    "volcano.pdf": (
        "Volcanic Activity Report",
        [
            (
                "Eruption history",
                "The Kelud volcano erupted in February 2014 and ash fell on Yogyakarta.",
            ),
            ("Monitoring", "Seismometers around the crater record tremors every ten seconds."),
        ],
    ),
    "bakery.pdf": (
        "Bakery Operations Manual",
        [
            ("Sourdough", "The sourdough starter is fed with rye flour at six in the morning."),
            ("Ovens", "Each deck oven is preheated to 250 degrees Celsius before baking bread."),
        ],
    ),
}


def fact_pdf(title: str, sections: list[tuple[str, str]], *, filler_pages: int = 1) -> bytes:
    """A born-digital PDF: a title, then per section a bold heading and a paragraph, plus filler."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 72.0
    page.insert_text((72, y), title, fontsize=22, fontname="hebo")
    y += 40
    for heading, body in sections:
        page.insert_text((72, y), heading, fontsize=15, fontname="hebo")
        y += 24
        rect = pymupdf.Rect(72, y, 540, y + 60)
        page.insert_textbox(rect, body, fontsize=11, fontname="helv")
        y += 80
    for i in range(filler_pages):
        extra = doc.new_page(width=612, height=792)
        extra.insert_text((72, 72), f"Appendix {i + 1}", fontsize=15, fontname="hebo")
        extra.insert_textbox(
            pymupdf.Rect(72, 100, 540, 300),
            "This appendix lists routine maintenance notes without any specific facts. " * 3,
            fontsize=11,
            fontname="helv",
        )
    data = doc.tobytes()
    doc.close()
    return data


def image_page_pdf(*, with_text_page: bool) -> bytes:
    """A page that is only a picture (as a scan is), optionally after a page with text."""
    doc = pymupdf.open()
    if with_text_page:
        doc.new_page().insert_text((72, 72), "Inspection summary: the boiler passed.", fontsize=12)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 100), False)
    pix.set_rect(pix.irect, (200, 200, 200))
    doc.new_page().insert_image(pymupdf.Rect(72, 72, 472, 272), pixmap=pix)
    data = doc.tobytes()
    doc.close()
    return data


GIANT_PAGE_PT = 14_400  # the largest page PDF allows: 200 inches a side


def giant_page_pdf() -> bytes:
    """One 14,400 x 14,400 pt page (a site plan, a poster): two sentences at mid-height, the
    first between y 7,150 and 7,210 from x 72."""
    doc = pymupdf.open()
    page = doc.new_page(width=GIANT_PAGE_PT, height=GIANT_PAGE_PT)
    for y, text in (
        (7_200, "Harbour site plan: berth 4 is dredged to twelve metres."),
        (7_300, "The container cranes on berth 5 lift forty tonnes each."),
    ):
        page.insert_text((72, y), text, fontsize=48)
    page.draw_rect(pymupdf.Rect(36, 36, GIANT_PAGE_PT - 36, GIANT_PAGE_PT - 36), width=4)
    data = doc.tobytes()
    doc.close()
    return data


def truncated_pdf() -> bytes:
    data = fact_pdf(*FACTS["volcano.pdf"])
    return data[: len(data) // 3]


def random_bytes() -> bytes:
    return bytes((i * 7919 + 13) % 256 for i in range(4096))


def html_named_pdf() -> bytes:
    return b"<!doctype html><html><body><h1>Not a PDF</h1></body></html>\n"


def encrypted_pdf(password: str = "s3cret") -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Confidential figures", fontsize=12)
    data = doc.tobytes(
        encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw=password + "-owner", user_pw=password
    )
    doc.close()
    return data


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF written object by object (1 = catalog), with a correct cross-reference table: for
    what PyMuPDF will not make (fonts without Unicode, empty page trees, hostile objects)."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def zero_page_pdf() -> bytes:
    """A well-formed PDF whose page tree is empty (PyMuPDF refuses to save one, so write it)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    return raw_pdf(objects)


BAD_INPUTS = {
    "truncated.pdf": truncated_pdf,
    "random.pdf": random_bytes,
    "page.pdf": html_named_pdf,
    "locked.pdf": encrypted_pdf,
    "empty-tree.pdf": zero_page_pdf,
}


WIDE_TABLE_YEARS = ["2017", "2018", "2019", "2020", "2021", "2022", "2023"]
WIDE_TABLE_ROWS = [
    ("Property and equipment", ["1,204", "1,310", "1,452", "1,617", "1,733", "1,890", "2,046"]),
    ("Total revenues", ["8,311", "9,027", "9,583", "10,329", "11,452", "12,068", "13,190"]),
    ("Operating expenses", ["6,102", "6,644", "7,015", "7,388", "8,120", "8,677", "9,210"]),
]


def wide_table_pdf(fontsize: float = 8.0) -> bytes:
    """A page with a sentence and an unruled table of a label column and seven years' figures
    (right-aligned) across the whole width, in `fontsize` points, as annual reports set them."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 72), "Selected financial data", fontsize=14, fontname="hebo")
    page.insert_textbox(
        pymupdf.Rect(72, 90, 540, 130),
        "The table below shows seven years of results (in millions of dollars).",
        fontsize=10,
    )
    rights = [250 + 44 * i for i in range(len(WIDE_TABLE_YEARS))]  # the last column ends at 514
    y = 160.0
    for x_right, year in zip(rights, WIDE_TABLE_YEARS, strict=True):
        width = pymupdf.get_text_length(year, fontsize=fontsize, fontname="hebo")
        page.insert_text((x_right - width, y), year, fontsize=fontsize, fontname="hebo")
    for label, figures in WIDE_TABLE_ROWS:
        y += 2 * fontsize
        page.insert_text((72, y), label, fontsize=fontsize)
        for x_right, value in zip(rights, figures, strict=True):
            width = pymupdf.get_text_length(value, fontsize=fontsize)
            page.insert_text((x_right - width, y), value, fontsize=fontsize)
    data = doc.tobytes()
    doc.close()
    return data
