"""``mpdoctor fleet``: every rank of a distributed job checks itself; rank 0 names the odd one out.

The modules, in the order data flows:

* ``launcher``: which launcher started this process (torchrun, Slurm, Open MPI,
  PMI) and what it says: rank, world size, local rank, node, where rank 0 is;
* ``rank``: the rank-side runner: the normal single-process check of this rank's
  own interpreter (``mpdoctor.probes.collect.take_snapshot`` and
  ``mpdoctor.doctor.judge``), reported through the store; ``devices``: the GPU its
  LOCAL_RANK selects, and the microkernels timed on that GPU only; ``steps``: what
  its check is doing, in words, for its heartbeat;
* ``protocol`` (pure: keys, heartbeats, gathering, the verdict, over any c10d-like
  store) and ``store_child`` (the child process that imports torch and holds the
  ``torch.distributed.TCPStore``, started by ``run_child`` and talking through files:
  ``mailbox``): no collective is ever used, every wait has a deadline;
* ``verdict``: rank 0's side, from what was gathered to the fleet report;
* ``fingerprint``: a rank's compact, comparable facts, from its snapshot;
* ``compare``: pure functions over the ranks' fingerprints: groups of identical
  ranks, and the FLEET findings, stamped with the FLEET rules that
  ``mpdoctor.checks.fleet`` declares in the one registry of codes;
* ``model``: the fleet report, a versioned JSON contract (``schema``);
* ``offline``: ``mpdoctor fleet compare`` over saved snapshots or reports, with
  ``loading`` (each distinct section decoded once) and ``judging`` (each distinct
  content judged once);
* ``api``: ``mpdoctor.fleet_check()`` inside a training script.

Nothing here imports torch at module level: only ``store_child`` and ``api`` do,
inside functions, and ``store_child`` runs as a child process.
"""
