"""What leaves clzoo for other tools: an encoder for serving and embeddings files.

- `serving.py`: `clzoo export` (SavedModel, ONNX, LiteRT);
- `embeddings.py`: `clzoo embed` (`.npz` / `.parquet`).
"""
