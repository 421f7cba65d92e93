"""The Docker engine as every layer sees it: one client (``client``), the labels every object
we create carries (``labels``), and the session's working folders (``session_folders``).

It sits below images and runtime so both can use it without importing each other.
"""
