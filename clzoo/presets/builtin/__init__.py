"""clzoo's built-in encoder presets (registry.json and one folder per preset), shipped as package data."""
