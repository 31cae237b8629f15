"""Noise mechanisms and privacy accounting shared by every capability."""
