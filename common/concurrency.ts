// At most `max` tasks at once; the others wait their turn, in order: p-limit's limiter.
export { default as concurrencyLimit } from 'p-limit';
