"""Audits of logged verified nodes at serving scale: the Parquet layout ``resispec-nodes/1`` (``schema``,
``io``, ``convert``, ``synth``), per-row-group statistics that merge exactly (``exact``, ``stats``), the
report (``report``) and the engines that run the per-row-group function (``runner_local``,
``runner_ray``). See docs/serving.md."""
