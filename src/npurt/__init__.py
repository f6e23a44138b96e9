"""npurt: an NPU runtime in Python, modelled on the CANN runtime, with a simulated NPU."""
__version__ = "0.1.0"
