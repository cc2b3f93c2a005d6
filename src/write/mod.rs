//! The DTD-driven trace writer (the decoder's mirror).
