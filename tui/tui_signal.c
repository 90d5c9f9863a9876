/* tui_signal.c - see tui_signal.h. */
#include "config.h"

#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "tui_signal.h"

static volatile sig_atomic_t stop_signal;
static struct termios saved_tio;
static int have_tio;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void on_fatal(int sig)
{
	/* mouse off, normal screen, cursor on, attributes reset */
	static const char seq[] = "\033[?2004l\033[?1000l\033[?1006l\033[?1049l\033[?25h\033[0m\r\n";
	if (have_tio)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	ssize_t w = write(STDOUT_FILENO, seq, sizeof seq - 1);
	(void)w;
	signal(sig, SIG_DFL);
	raise(sig);
}

void tui_signal_save_tty(void)
{
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tio) == 0)
		have_tio = 1;
}

void tui_signal_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int tui_signal_pending(void)
{
	return stop_signal;
}

void tui_signal_restore_tty(void)
{
	if (have_tio)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
}
