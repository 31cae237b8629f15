"""Plotly figure builders for the dashboard pages.

Pure functions: data (NumPy arrays, SciPy sparse matrices, pandas frames, :mod:`dpviz` objects) in,
``plotly.graph_objects.Figure`` out. No Streamlit import here: the pages only read widgets, call
:mod:`dpviz` and draw what these functions return, so every figure can be unit-tested.
"""
