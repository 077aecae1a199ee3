"""The simulation backend (``testbed run --backend sim``): the master's own decision code
driven by a discrete-event shell on a virtual clock, its nodes modelled (docs/simulation.md)."""
