"""waste_ref: independent PyTorch reference for WASTE v0 containers (see python/README.md)."""
