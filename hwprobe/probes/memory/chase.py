"""Pointer-chase visiting orders for the latency probes: one cycle through every slot, random or page-local."""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# Pointer-chase orders

def random_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """A visiting order of all ``n`` slots (slot 0 first); following it wraps into one cycle of length n."""
    if n < 1:
        raise ValueError("need at least one slot")
    rest = rng.permutation(np.arange(1, n))
    return np.concatenate([[0], rest]).astype(np.int64)


def page_local_cycle(n: int, per_page: int, rng: np.random.Generator) -> np.ndarray:
    """A visiting order that takes the pages in random order and, within a page, every slot in random order:
    each access still misses the caches (each slot is visited once per cycle) but the TLB sees one page at a
    time. ``n`` must be a multiple of ``per_page``; slot 0 comes first."""
    if n % per_page:
        raise ValueError("n must be a multiple of per_page")
    pages = np.concatenate([[0], rng.permutation(np.arange(1, n // per_page))])
    order = []
    for pg in pages:
        within = rng.permutation(per_page)
        if pg == 0:
            within = np.concatenate([[0], within[within != 0]])
        order.append(pg * per_page + within)
    return np.concatenate(order).astype(np.int64)


def next_slots(order: np.ndarray) -> np.ndarray:
    """nxt[s] = the slot visited after s, so the chase of ``order`` is one cycle through every slot."""
    nxt = np.empty_like(order)
    nxt[order] = np.roll(order, -1)
    return nxt


def slot_after(order: np.ndarray, steps: int) -> int:
    """The slot reached from order[0] after ``steps`` steps."""
    return int(order[steps % len(order)])


def sparse_random_cycle(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct slots of ``n``, in random order: a cycle that visits a random sample of a large set, each
    slot once, without writing (or even touching) the rest of it."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n (k={k}, n={n})")
    return rng.choice(n, size=k, replace=False).astype(np.int64)


def sparse_page_local_cycle(n: int, per_page: int, k: int, per_visit: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` slots of ``n`` visited page by page: random pages (each at most once), ``per_visit`` random distinct
    slots of each page in random order, then the next page; the TLB sees one page per ``per_visit`` steps."""
    if n % per_page or not 1 <= per_visit <= per_page:
        raise ValueError("n must be a multiple of per_page and 1 <= per_visit <= per_page")
    pages = -(-k // per_visit)
    if pages > n // per_page:
        raise ValueError(f"{k} slots at {per_visit} per page need {pages} pages; the set has {n // per_page}")
    chosen = rng.choice(n // per_page, size=pages, replace=False)
    order = [pg * per_page + rng.choice(per_page, size=per_visit, replace=False) for pg in chosen]
    return np.concatenate(order)[:k].astype(np.int64)
