"""The ``diffkit`` command line: a thin front end that parses, calls the library, formats."""
