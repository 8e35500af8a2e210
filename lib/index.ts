export * from './board';
export * from './core';
export * from './nest';
