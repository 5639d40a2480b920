"""Core ops written as OpenVINO layers (write_signal.py), run by OpenVINO's CPU plugin."""
