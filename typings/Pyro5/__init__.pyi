# Type stubs for the parts of Pyro5 (5.x) that landlord and lookup use: Pyro5
# ships no type information, and mypy --strict checks our calls against these.
__version__: str
