"""MixNet's methods: :mod:`.circuits` for the per-layer circuit allocation (problem ``mixnet``),
:mod:`.plan` for the cross-layer reconfiguration plan (problem ``mixnet_plan``)."""
