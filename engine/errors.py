"""The one exception type that user-facing layers turn into a one-line message."""


class UserError(ValueError):
    """Bad input from a person: the message names the field and the value, in one line."""
