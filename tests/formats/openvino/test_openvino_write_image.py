"""Core ops written as OpenVINO layers (write_image.py), run by OpenVINO's CPU plugin."""
