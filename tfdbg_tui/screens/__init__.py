"""The app's screens: the debugger, and the small modal ones it opens."""
