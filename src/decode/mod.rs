//! The generic decoder: compiled record programs + live metadata state → borrowed record views.
