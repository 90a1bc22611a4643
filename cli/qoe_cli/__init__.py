"""The ``qoe`` command: a thin Click layer over the :mod:`qoe` library."""
