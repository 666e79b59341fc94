"""The default ``--timeout``, and the limits the environment probe's parts enforce themselves.

Declared once, here, because both sides need them: the host's ``Budget``
(``mpdoctor/probes/budget.py``, which tables every limit) derives its
``apex_users``, ``project_scan``, ``apex_loads`` and ``apex_load_each`` with
:func:`handed_limits` and hands them to a part on its command line; ``target.py``
falls back on the same function, for ``DEFAULT_TIMEOUT``, only where a part is
started without them (by hand, or with a JSON object it cannot read). So no number
is repeated on either side. Stdlib only (it imports nothing), Python 3.8+, like the
rest of this package.
"""

DEFAULT_TIMEOUT = 60.0  # s: --timeout's default (check, explain --check, fleet), declared here only


def handed_limits(timeout):
    """The limits a part enforces itself for a ``--timeout`` of ``timeout`` seconds (see budget.py's table).

    ``apex_users`` and ``project_scan``: the env part's scans (``Budget.env_limits``);
    ``apex_loads`` and ``apex_load_each``: the torch part's apex loads (``Budget.torch_limits``).
    """
    apex_loads = min(20.0, timeout / 3)
    return {
        "apex_users": min(3.0, timeout / 4),
        # 1.5 s up to the default --timeout, then in proportion to it (T/40): a longer --timeout reads more of a
        # large project; below 9 s, a sixth of it, as before
        "project_scan": max(min(1.5, timeout / 6), timeout / 40),
        "apex_loads": apex_loads,
        "apex_load_each": min(apex_loads, max(1.0, min(10.0, apex_loads / 3))),
    }
