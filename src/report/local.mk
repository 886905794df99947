## src/report/local.mk -- a finished run read back: combined results, tables, plots
## (uses config and below).
noinst_LTLIBRARIES += src/report/libreport.la
src_report_libreport_la_SOURCES = \
	%D%/report_data.c %D%/report_data.h %D%/report_table.c %D%/report_table.h \
	%D%/report_plot.c %D%/report_plot.h %D%/report_gp.c %D%/report_gp.h \
	%D%/report.c %D%/report.h
