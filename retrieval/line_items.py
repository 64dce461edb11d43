"""The statement line items a financial measure is computed from, for the search and answer.

"What is the cash ratio in FY2021 for Nike?" names no word of the page that answers it: the
balance sheet's "Cash and equivalents", "Short-term investments" and "Total current liabilities".
A question naming a standard measure (current ratio, EBITDA, inventory turnover, free cash flow,
...) or a financial statement has the line items of its textbook definition added to its query,
dense and lexical, and its answer sentences are ranked against that longer question, so that the
statement's page and rows can outscore the notes that merely repeat the measure's name. The
answer also reads which row a question asks for from it (`measure_text`). The glossary is general
accounting, not fitted to any document; docs/benchmarks.md measures what it does.
"""

from __future__ import annotations

import re

__all__ = ["line_items", "measure_text", "other_names", "with_line_items"]

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
_CURRENT = "total current assets total current liabilities"
_CASH = "cash and cash equivalents short-term investments"
_SALES_NAMES = ("revenues", "net sales")
_COST_NAMES = ("cost of sales", "cost of goods sold", "cost of revenue")
_SALES = " ".join(_SALES_NAMES)
_COST = " ".join(_COST_NAMES)
_EQUITY = "total shareholders equity"

_MEASURES: dict[str, str] = {
    r"current ratio": _CURRENT,
    r"quick ratio|acid[- ]test": f"{_CASH} accounts receivable total current liabilities",
    r"cash ratio": f"{_CASH} total current liabilities",
    r"working capital": _CURRENT,
    r"inventory turnover|days? (?:of )?inventory|\bDIO\b": f"{_COST} inventories",
    r"receivables? turnover|days? sales outstanding|\bDSO\b": f"{_SALES} accounts receivable",
    r"payables? turnover|days? payables? outstanding|\bDPO\b": f"{_COST} accounts payable",
    r"cash conversion cycle|\bCCC\b": (
        f"{_COST} {_SALES} inventories accounts receivable accounts payable"
    ),
    r"gross (?:profit )?margin": f"gross profit {_SALES} {_COST}",
    r"operating (?:profit )?margin": f"operating income {_SALES}",
    r"net (?:profit |income )?margin|profit margin": f"net income {_SALES}",
    r"\bEBITDAR?\b": "operating income depreciation and amortization",
    r"\bEBIT\b|interest coverage": "operating income interest expense",
    r"return on (?:average )?assets|\bROA\b": "net income total assets",
    r"return on (?:average )?(?:shareholders'? |stockholders'? )?equity|\bROE\b": (
        f"net income {_EQUITY}"
    ),
    r"return on capital employed|\bROCE\b": (
        "operating income total assets total current liabilities"
    ),
    r"invested capital|\bROIC\b": f"long-term debt {_EQUITY} operating income",
    r"debt[- ]to[- ]equity|capitali[sz]ation ratio|leverage ratio": f"long-term debt {_EQUITY}",
    r"effective tax rate": "income tax expense income before income taxes",
    r"free cash flow|\bFCF\b": (
        "net cash provided by operating activities purchases of property and equipment"
    ),
    r"asset turnover": f"{_SALES} total assets",
    r"dividend payout": "dividends net income",
}
# measures that are a line item themselves, under other names (each a row label's words whole)
_ALIASES: dict[str, tuple[str, ...]] = {
    r"capital expenditures?|\bcapex\b": ("purchases of property plant and equipment",),
    r"\bCOGS\b": _COST_NAMES,
    r"\btop[- ]?line\b": _SALES_NAMES,
    r"\bbottom[- ]?line\b": ("net income",),
    r"\bEPS\b": ("earnings per share",),
    r"\bR&D\b": ("research and development",),
    r"\bSG&A\b": ("selling general and administrative",),
    r"\bD&A\b": ("depreciation and amortization",),
    r"\bCEO\b": ("chief executive officer",),
    r"\bCFO\b": ("chief financial officer",),
}
_STATEMENTS: dict[str, str] = {
    r"balance sheets?|statements? of financial position": (
        f"balance sheets {_CURRENT} total assets {_EQUITY}"
    ),
    r"income statements?|statements? of (?:income|operations|earnings)|\bP&L\b": (
        f"statements of income {_SALES} operating income net income"
    ),
    r"cash flows? statements?|statements? of cash flows": (
        "statements of cash flows operating activities investing activities financing activities"
    ),
}


def _compiled(glossary: dict[str, str]) -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p, re.IGNORECASE), items) for p, items in glossary.items()]


_ALIAS_PATTERNS = [(re.compile(p, re.IGNORECASE), names) for p, names in _ALIASES.items()]
_STATEMENT_PATTERNS = _compiled(_STATEMENTS)
_PATTERNS = (
    _compiled(_MEASURES)
    + [(pattern, " ".join(names)) for pattern, names in _ALIAS_PATTERNS]
    + _STATEMENT_PATTERNS
)


def line_items(question: str) -> list[str]:
    """The line items of every measure and statement the question names, in glossary order."""
    return [items for pattern, items in _PATTERNS if pattern.search(question)]


def with_line_items(question: str) -> str:
    """The question followed by the line items of the measures it names (itself if none)."""
    items = line_items(question)
    return " ".join([question, *items]) if items else question


def measure_text(question: str) -> str:
    """What the question asks to be counted, in its own words: its asking sentences (those that
    end in "?", when others tell how to answer: "Answer in USD millions. Base your judgments on
    the information provided…" counts nothing), without the statements it names (the statement
    a figure is read from is not the figure: "net income" is no answer to "the COGS from the
    income statement"). A ratio's line items are left out: it is computed from several rows,
    none of which is the answer."""
    sentences = _SENTENCE_END.split(question.strip())
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    if asking and len(asking) < len(sentences):
        question = " ".join(asking)
    for pattern, _ in _STATEMENT_PATTERNS:
        question = pattern.sub(" ", question)
    return question


def other_names(question: str) -> list[str]:
    """The other names of each measure the question names that is a line item itself, each a
    row label's words whole ("cost of revenue" for COGS; "purchases of property plant and
    equipment" for capex, of which "Gross property, plant and equipment" holds no name)."""
    named = [names for pattern, names in _ALIAS_PATTERNS if pattern.search(question)]
    return [name for names in named for name in names]
