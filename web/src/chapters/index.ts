/**
 * The chapter registry: the page shows these chapters, in this order. Adding a chapter is
 * one line here (see web/CHAPTERS.md); each entry loads the chapter's own module, so
 * chapters are separate chunks and can be written in parallel.
 */
import type { Chapter, ChapterText } from './types';

export type ChapterLoader = () => Promise<{ default: Chapter<any> }>;

export const CHAPTERS: readonly ChapterLoader[] = [
  () => import('./ch1-score'),
  () => import('./ch2-scoring-functions'),
  () => import('./ch3-scaling'),
  () => import('./ch4-temperature'),
  () => import('./ch5-masks'),
  () => import('./ch6-normalizers'),
  () => import('./ch7-cost'),
  () => import('./ch8-beyond'),
  () => import('./ch9-diagnostics'),
  () => import('./ch10-code'),
  () => import('./ch11-train'),
];

export type { Chapter, ChapterText };
