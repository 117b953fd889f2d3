"""Every tolerance and threshold behind a verdict, each with its derivation.

Tests, checks and the report read them from here, so the report can print
the threshold each verdict used and nothing is twinned under two names.
A tolerance comes from a bound, a measured noise level or an alpha, never
from "what made it pass". Sections by area; keep each constant's reason
in the comment above it.
"""

from __future__ import annotations

# --- statistics ---------------------------------------------------------------



# --- model, decoding, cache ---------------------------------------------------



# --- quantization -------------------------------------------------------------



# --- pruning ------------------------------------------------------------------



# --- speculative decoding -----------------------------------------------------



# --- timing -------------------------------------------------------------------



# --- end ----------------------------------------------------------------------
