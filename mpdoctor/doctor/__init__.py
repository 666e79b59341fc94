"""One run of ``mpdoctor check``: gather the facts, judge them, wrap them in a report.

``gather`` (probe or load), ``judge`` (run the selected checks), ``diagnose``
(both, as a :class:`~mpdoctor.doctor.report.Report`). Nothing here prints.
"""
