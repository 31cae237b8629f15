"""The one exception type for bad user input (files, parameters).

The CLI turns it into exit code 2 plus one line on stderr; the pages show it with ``st.error``.
Messages name the row/field and say what was expected.
"""


class InputError(ValueError):
    """Bad input from a user: the message is meant to be shown as is."""
