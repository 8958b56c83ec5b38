//! What the libraries promise, as data.
