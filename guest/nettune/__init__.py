"""nettune: plan, apply, verify and revert multiqueue NIC tuning inside a Linux guest.

Standard library only; runs on Python 3.9 or newer.
"""

__version__ = "0.1.0"
