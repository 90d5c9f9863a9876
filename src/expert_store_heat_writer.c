/* expert_store_heat_writer.c - heat.bin saved in the background.
 *
 * Every SAVE_EVERY routings the store persists its heat (expert_store_hot.c).
 * Writing means a temporary file, fsync, rename and a directory fsync:
 * milliseconds to seconds on a busy disk, which the engine thread must not
 * spend between two decode steps. So the engine thread only copies the heat
 * into a buffer allocated at open (store_heat_fill: arithmetic, no
 * syscalls) and signals this file's thread, which writes it. If the
 * previous snapshot is still being written the new one is skipped: the
 * next one comes SAVE_EVERY routings later, and close saves synchronously
 * anyway, so at most a little recent heat is lost on a crash (heat only
 * ever changes speed). */
#include "config.h"

#include "expert_store_int.h"

#include <errno.h>
#include <stdlib.h>

#include "coli_log.h"

static void *writer_main(void *arg)
{
	expert_store *s = arg;
	pthread_mutex_lock(&s->hw_lock);
	for (;;) {
		while (!s->hw_busy && !s->hw_stop)
			pthread_cond_wait(&s->hw_cond, &s->hw_lock);
		if (!s->hw_busy)
			break; /* stopping with nothing to write */
		pthread_mutex_unlock(&s->hw_lock);
		coli_err e;
		coli_err_clear(&e);
		if (store_heat_write(s->o.heat_dir, s->hw_buf, s->hw_size, &e) < 0)
			coli_warn("%s", e.msg);
		pthread_mutex_lock(&s->hw_lock);
		s->hw_busy = 0;
		pthread_cond_broadcast(&s->hw_cond);
	}
	pthread_mutex_unlock(&s->hw_lock);
	return NULL;
}

int store_heat_writer_start(expert_store *s, coli_err *err)
{
	if (!s->o.heat_dir || !s->heat || s->hw_started)
		return 0;
	s->hw_size = store_heat_size(s);
	s->hw_buf = malloc(s->hw_size);
	if (!s->hw_buf)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory for the heat snapshot");
	pthread_mutex_init(&s->hw_lock, NULL);
	pthread_cond_init(&s->hw_cond, NULL);
	s->hw_busy = s->hw_stop = 0;
	int rc = pthread_create(&s->hw_thread, NULL, writer_main, s);
	if (rc) {
		pthread_mutex_destroy(&s->hw_lock);
		pthread_cond_destroy(&s->hw_cond);
		free(s->hw_buf);
		s->hw_buf = NULL;
		return coli_err_set(err, -rc, "expert store: cannot start the heat writer thread");
	}
	s->hw_started = 1;
	return 0;
}

void store_heat_writer_kick(expert_store *s)
{
	if (!s->hw_started)
		return;
	pthread_mutex_lock(&s->hw_lock);
	int busy = s->hw_busy;
	pthread_mutex_unlock(&s->hw_lock);
	if (busy)
		return; /* the previous snapshot is still being written */
	/* not busy: the writer does not touch hw_buf until hw_busy is set */
	store_heat_fill(s, s->hw_buf);
	pthread_mutex_lock(&s->hw_lock);
	s->hw_busy = 1;
	pthread_cond_broadcast(&s->hw_cond);
	pthread_mutex_unlock(&s->hw_lock);
}

void store_heat_writer_stop(expert_store *s)
{
	if (!s->hw_started)
		return;
	pthread_mutex_lock(&s->hw_lock);
	s->hw_stop = 1;
	pthread_cond_broadcast(&s->hw_cond);
	pthread_mutex_unlock(&s->hw_lock);
	pthread_join(s->hw_thread, NULL); /* finishes a write in progress */
	pthread_mutex_destroy(&s->hw_lock);
	pthread_cond_destroy(&s->hw_cond);
	free(s->hw_buf);
	s->hw_buf = NULL;
	s->hw_started = 0;
}
