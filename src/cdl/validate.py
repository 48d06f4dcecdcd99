"""Validation (public module): documents against the CDL schema
(:func:`validate_documents`) and typed values against their types
(:func:`check_types`). Both are optional in CDL (6.1); the implementation is
``cdl.loading.schema``.
"""

from .loading.schema import check_types, validate_documents

__all__ = ["check_types", "validate_documents"]
