/* tui_signal.h - signals while the terminal is in curses mode.
 *
 * SIGTERM, SIGINT and SIGHUP only set a flag; the main loop sees it within
 * one refresh and leaves through the normal path (cancel, save, endwin).
 * Fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) cannot go back
 * to the loop: their handler restores the termios saved before curses
 * started, turns bracketed paste and the mouse off and leaves the
 * alternate screen with async-signal-safe write(),
 * then re-raises with the default action so the exit status and core are
 * what they would have been. SIGWINCH is left to curses (KEY_RESIZE). */
#ifndef COLI_TUI_SIGNAL_H
#define COLI_TUI_SIGNAL_H

/* Save the terminal state as the user had it. Call before curses touches
 * the terminal (newterm already changes it): what is saved here is what
 * every exit path puts back. */
void tui_signal_save_tty(void);
/* Install the handlers (after tui_signal_save_tty). */
void tui_signal_install(void);
/* The stop signal received, or 0. */
int tui_signal_pending(void);
/* Put the saved termios back (also used after endwin as a last resort). */
void tui_signal_restore_tty(void);

#endif
