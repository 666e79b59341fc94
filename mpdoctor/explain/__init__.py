"""`mpdoctor explain`: recognise known mixed-precision failures in an error message or a log.

No torch here, and nothing slower than linear in the size of the input: the
signatures (``known/``) are data, the matcher (``matcher.py``) reads text.
"""
