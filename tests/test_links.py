"""Citation links (`retrieval.links`): one format built and parsed in one place, and signatures
that authorise one link until it expires."""

from __future__ import annotations

import time

import pytest

from retrieval.links import (
    LinkRefusedError,
    LinkSigner,
    carries_signature,
    citation_links,
    crop_url,
    highlight_of,
    page_image_url,
    parse_boxes,
    viewer_url,
)
from retrieval.schema import Region

DOC = "ab" * 32
BOXES = [(72.0, 100.0, 300.0, 110.25), (72.0, 300.0, 300.0, 322.0)]
SIGNER = LinkSigner.for_api_key("s3cret-key", ttl_s=3600)


def _check(signer: LinkSigner, url: str, now: float | None = None) -> None:
    path, _, query = url.partition("?")
    signer.check(path, query, now=now)


def test_links_are_built_in_one_format_and_read_back() -> None:
    drawn = "72.0,100.0,300.0,110.2;72.0,300.0,300.0,322.0"
    assert page_image_url(DOC, 3) == f"/documents/{DOC}/pages/3.png"
    assert page_image_url(DOC, 3, BOXES) == f"/documents/{DOC}/pages/3.png?highlight={drawn}"
    assert viewer_url(DOC, 3, BOXES) == f"/documents/{DOC}/pages/3/view?highlight={drawn}"
    assert crop_url(DOC, 3, [BOXES[0]], BOXES) == (
        f"/documents/{DOC}/pages/3/crop.png?bbox=72.0,100.0,300.0,110.2&highlight={drawn}"
    )
    assert highlight_of(viewer_url(DOC, 3, BOXES)) == [(72.0, 100.0, 300.0, 110.2), BOXES[1]]
    assert highlight_of(page_image_url(DOC, 3)) == []


def test_parse_boxes_orders_corners_and_refuses_what_is_not_a_box() -> None:
    assert parse_boxes("300,110,72,100;") == [(72.0, 100.0, 300.0, 110.0)]
    assert parse_boxes(None) == [] and parse_boxes("") == []
    for bad, says in [
        ("1,2,3", "four numbers"),
        ("1,2,3,x", "not a number"),
        ("1,2,3,1e9", "out of bounds"),
        ("1,2,3,nan", "out of bounds"),
        (";".join(["1,2,3,4"] * 51), "at most 50"),
    ]:
        with pytest.raises(ValueError, match=says):
            parse_boxes(bad)


def test_citation_links_draw_each_cited_page() -> None:
    regions = [Region(page=3, bbox=(72.0, 700.0, 300.0, 722.0)), Region(page=4, bbox=BOXES[1])]
    links = citation_links(DOC, 3, regions[0].bbox, regions, [regions[0].bbox])
    assert links["highlight_url"] == page_image_url(DOC, 3, [regions[0].bbox])
    assert [(p.page, p.highlight_url) for p in links["page_highlights"]] == [
        (3, links["highlight_url"]),
        (4, page_image_url(DOC, 4, [BOXES[1]])),
    ]
    assert links["page_url_template"].replace("{n}", "7") == page_image_url(DOC, 7)
    assert highlight_of(links["crop_url"]) == [regions[0].bbox]


def test_a_signed_link_opens_until_it_expires() -> None:
    url = page_image_url(DOC, 3, BOXES)
    signed = SIGNER.sign(url)
    assert signed.startswith(url + "&exp=") and "&sig=" in signed
    assert carries_signature(signed.partition("?")[2]) and not carries_signature("highlight=1")
    _check(SIGNER, signed)
    exp = int(signed.split("exp=")[1].split("&")[0])
    assert time.time() + 3590 < exp <= time.time() + 3600
    with pytest.raises(LinkRefusedError, match="expired"):
        _check(SIGNER, signed, now=exp + 1)
    old = SIGNER.sign(url, expires=int(time.time()) - 1)
    with pytest.raises(LinkRefusedError, match="expired"):
        _check(SIGNER, old)


def test_the_signature_covers_the_path_the_parameters_and_the_expiry() -> None:
    signed = SIGNER.sign(crop_url(DOC, 3, [BOXES[0]], BOXES))
    exp = signed.split("exp=")[1].split("&")[0]
    tampered = [
        signed.replace("/pages/3/", "/pages/4/"),  # another page
        signed.replace("/crop.png", ".png"),  # another kind of link
        signed.replace(DOC, "cd" * 32),  # another document
        signed.replace("bbox=72.0", "bbox=0.0"),  # another region
        signed.replace(f"exp={exp}", f"exp={int(exp) + 86400}"),  # a later expiry
        signed + "&dpi=300",  # a parameter added
        signed.replace("&highlight=", "&dpi=300&highlight="),
        signed.replace("&highlight=", "&highlight=1,1,2,2&highlight="),
        signed[:-2] + ("AA" if not signed.endswith("AA") else "BB"),  # another signature
    ]
    for url in tampered:
        with pytest.raises(LinkRefusedError, match="signature does not match"):
            _check(SIGNER, url)
    other_key = LinkSigner.for_api_key("another-key", ttl_s=3600)
    with pytest.raises(LinkRefusedError, match="signature does not match"):
        _check(other_key, signed)


def test_an_equivalent_query_still_opens() -> None:
    """Clients may percent-encode `,` and `;` or reorder parameters: the meaning is signed."""
    signed = SIGNER.sign(page_image_url(DOC, 3, BOXES))
    _check(SIGNER, signed.replace(",", "%2C").replace(";", "%3B"))
    path, _, query = signed.partition("?")
    SIGNER.check(path, "&".join(reversed(query.split("&"))))


def test_what_a_signature_cannot_authorise() -> None:
    for url, says in [
        (page_image_url(DOC, 3), "not signed"),
        (SIGNER.sign(f"/documents/{DOC}/json"), "page images, crops and viewer pages only"),
        (SIGNER.sign("/documents"), "page images, crops and viewer pages only"),
        (SIGNER.sign(page_image_url(DOC, 3)) + "&sig=x", "more than one signature"),
        (page_image_url(DOC, 3) + "?exp=soon&sig=x", "not a time"),
    ]:
        with pytest.raises(LinkRefusedError, match=says):
            _check(SIGNER, url)
    with pytest.raises(ValueError, match="signed already"):
        SIGNER.sign(SIGNER.sign(page_image_url(DOC, 3)))
    with pytest.raises(ValueError, match="must not be empty"):
        LinkSigner.for_api_key("")


def test_a_viewer_link_beside_the_cited_page_names_the_page_its_boxes_are_of() -> None:
    doc = "a" * 64
    box = (72.0, 100.0, 300.0, 120.0)
    beside = viewer_url(doc, 13, [box], on=12)
    assert beside == f"/documents/{doc}/pages/13/view?highlight=72.0,100.0,300.0,120.0&on=12"
    assert highlight_of(beside) == [box]
    assert viewer_url(doc, 12, [box], on=12) == viewer_url(doc, 12, [box])  # its own page
    assert viewer_url(doc, 13, [], on=12) == f"/documents/{doc}/pages/13/view"  # nothing to keep
