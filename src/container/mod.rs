//! The trace container: header, section index, DTD lookup (docs/format.md §2, §10).
