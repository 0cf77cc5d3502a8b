"""Exported systems: the Hub layout (``hub``), loading either layout (``system``), ONNX."""
