"""Root pytest configuration: hypothesis profiles (see ``properties/settings.py``).

``HYPOTHESIS_PROFILE=dev|ci|fuzz`` selects one; the default is ``dev`` locally and
``ci`` when the ``CI`` environment variable is set.
"""

from properties.settings import load_profile

load_profile()
