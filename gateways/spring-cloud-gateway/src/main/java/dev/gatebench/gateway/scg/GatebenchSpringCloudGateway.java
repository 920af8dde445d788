package dev.gatebench.gateway.scg;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * Spring Cloud Gateway as gatebench runs it: the stock WebFlux gateway, plus one generic route
 * predicate ({@link RawPathRoutePredicateFactory}).
 *
 * <p>Routes, port and every proxy setting come from the application.yml that gatebench's
 * spring-cloud-gateway renderer writes for one API description; it is passed at start with
 * {@code --spring.config.location=file:/path/application.yml}.
 */
@SpringBootApplication
public class GatebenchSpringCloudGateway {

    public static void main(String[] args) {
        SpringApplication.run(GatebenchSpringCloudGateway.class, args);
    }

    @Bean
    public RawPathRoutePredicateFactory rawPathRoutePredicateFactory() {
        return new RawPathRoutePredicateFactory();
    }
}
